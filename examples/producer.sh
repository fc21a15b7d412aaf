#!/bin/sh
# producer.sh - push one message into a queenfs queue, crash-safely.
# The payload is read from stdin and staged in a dot-file, which the mount
# never pushes; renaming it to its plain name pushes it (the Maildir way).
# A producer killed mid-write thus never publishes half a payload.  mv
# returns only once the message is durable; a duplicate transactionId is
# an idempotent retry.
#
# usage: producer.sh QUEUE_DIR TXID [PARTITION] <payload
#   echo '{"id": 1}' | examples/producer.sh /mnt/queenfs/queues/jobs order-1
set -eu
[ $# -ge 2 ] || { echo "usage: $0 QUEUE_DIR TXID [PARTITION] <payload" >&2; exit 2; }
dir=$1
[ $# -ge 3 ] && dir=$1/partitions/$3
tmp=$dir/.$2.$$
trap 'rm -f "$tmp"' EXIT INT TERM
cat >"$tmp"
mv "$tmp" "$dir/$2"
trap - EXIT INT TERM
