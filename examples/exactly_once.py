#!/usr/bin/env python3
"""Charge each payment once: pop, process, commit the whole step as one transaction."""
import json, os, sys

MNT = sys.argv[1] if len(sys.argv) > 1 else "/mnt/queen"

def call(endpoint, body):
    # one api/ file: open read-write, write the request, read the answer
    fd = os.open(os.path.join(MNT, "api", endpoint), os.O_RDWR)
    try:
        os.write(fd, json.dumps(body).encode())
        out = b""
        while chunk := os.read(fd, 1 << 16):
            out += chunk
    finally:
        os.close(fd)
    return json.loads(out)

def handle(m):
    p = m["payload"]                          # {"paymentId", "orderId", "amount"}
    receipt = {"orderId": p["orderId"], "paymentId": p["paymentId"], "charged": p["amount"]}
    ack = {"transactionId": m["transactionId"], "partitionId": m["partitionId"],
           "consumerGroup": m["consumerGroup"], "leaseId": m["leaseId"]}
    res = call("transaction", {
        "operations": [dict(ack, type="ack", status="completed"),
                       {"type": "push", "queue": "receipts", "payload": receipt}],
        "kv": [{"op": "put", "ns": "orders", "key": "order-" + p["orderId"],
                "value": {"status": "paid"}, "ttl": "30d"},
               {"op": "putIfAbsent", "ns": "payments", "key": p["paymentId"],   # the once gate
                "value": {"orderId": p["orderId"]}, "ttl": "30d", "required": True}]})
    if res["success"]:
        return "charged " + p["paymentId"]
    if res["reason"] == "kv_precondition":    # the gate: handled before; ack on its own
        call("ack", dict(ack, status="completed"))
        return "duplicate " + p["paymentId"]
    if res["reason"] == "rejected_ack":       # the lease ran out: another worker has it
        return "lost " + p["paymentId"]
    raise RuntimeError(res["reason"] + ": " + res["error"])

if __name__ == "__main__":
    while True:
        batch = call("pop", {"queue": "payments", "consumerGroup": "billing", "batch": 10})
        if not batch["messages"]:
            break
        for m in batch["messages"]:
            print(handle(m), flush=True)
