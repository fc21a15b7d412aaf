#!/bin/sh
# fs-0061-http-serve: the daemon with --listen and no mountpoint (no FUSE
# needed), bearer tokens (401 without a valid one, /health open), the
# refusal of a non-loopback --listen without a token file or
# --http-insecure, -o listen=, and an orderly stop on SIGTERM that
# answers a parked long poll.
. "$(dirname "$0")/lib.sh"
test_have_prereq PYTHON || skip_all "no python3"
command -v curl >/dev/null 2>&1 || skip_all "no curl"
test -x "$QUEENFS" || skip_all "no $QUEENFS (run make)"
TRASH=$(mktemp -d "${TMPDIR:-/tmp}/queenfs-test.XXXXXX") || exit 1
cp "$TEST_DIRECTORY/http_base.py" "$TRASH/" || exit 1
free_port () {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
PORT=$(free_port)
QHTTP=127.0.0.1:$PORT
URL=http://$QHTTP
export QHTTP
printf '# tokens\nsecret-one\nsecret-two\n' >"$TRASH/tokens"

# serve ARGS...: start the daemon without a mount; wait until it answers
serve () {
	"$QUEENFS" -f --db "$TRASH/queen.db" "$@" >>"$TRASH/daemon.log" 2>&1 </dev/null &
	SPID=$!
	track_pid $SPID
	wait_until 10 "curl -s -o /dev/null $URL/health"
}

test_expect_success 'a non-loopback --listen needs a token file or --http-insecure' '
	test_must_fail "$QUEENFS" -f --db "$TRASH/x.db" --listen 0.0.0.0:$PORT 2>err &&
	grep "not a loopback address: give --http-token-file FILE or --http-insecure" err &&
	test_path_is_missing "$TRASH/x.db"
'

test_expect_success 'a bad --listen address is refused at once' '
	test_must_fail "$QUEENFS" -f --db "$TRASH/x.db" --listen nonsense 2>err &&
	grep "not HOST:PORT" err
'

test_expect_success 'no mountpoint: the daemon serves HTTP alone, tokens required' '
	serve --listen "$QHTTP" --http-token-file "$TRASH/tokens" &&
	grep "serving Queen.s API on http://$QHTTP (bearer tokens required)" "$TRASH/daemon.log"
'

test_expect_success '401 {error} without a token or with a wrong one; /health stays open' '
	curl -s -o body -w "%{http_code}\n" -X POST -d "{\"items\":[{\"queue\":\"a\",\"payload\":1}]}" $URL/api/v1/push >actual &&
	echo 401 >expect && test_cmp expect actual && grep "\"error\"" body &&
	curl -s -o body -w "%{http_code}\n" -H "Authorization: Bearer secret-on" "$URL/api/v1/pop/queue/a" >actual &&
	test_cmp expect actual &&
	curl -s -o body -w "%{http_code}\n" -H "Authorization: Bearer secret-one-more" "$URL/api/v1/pop/queue/a" >actual &&
	test_cmp expect actual &&
	curl -s -o body -w "%{http_code}\n" $URL/health >actual &&
	echo 200 >expect && test_cmp expect actual &&
	! grep -q secret "$TRASH/daemon.log"
'

test_expect_success 'with a valid token: push, then pop (either token)' '
	python3 <<\EOF
from http_base import *
c = Client(token="secret-two")
st, js, _ = c.call("POST", "/api/v1/push", {"items": [{"queue": "a", "payload": {"x": 1}}]})
eq(201, st, "push")
c = Client(token="secret-one")
st, js, _ = c.call("GET", "/api/v1/pop/queue/a?wait=false")
eq(200, st, "pop"); eq({"x": 1}, js["messages"][0]["data"], "data")
EOF
'

test_expect_success 'the unauthorised push wrote nothing' '
	python3 <<\EOF
from http_base import *
c = Client(token="secret-one")
st, js, _ = c.call("GET", "/api/v1/pop/queue/a?wait=false")
eq(204, st, "only the authorised message was there")
EOF
'

test_expect_success 'SIGTERM answers a parked long poll and the daemon exits 0' '
	{ curl -s -o lp.out -w "%{http_code}\n" -H "Authorization: Bearer secret-one" \
	    "$URL/api/v1/pop/queue/none?wait=true&timeout=30000" >lp.code & } &&
	cpid=$! && track_pid $cpid &&
	sleep 0.5 &&
	kill -TERM $SPID &&
	wait_until 10 "test -s lp.code" &&
	echo 503 >expect && test_cmp expect lp.code &&
	wait $SPID
'

test_expect_success '-o listen= is the fstab spelling of --listen' '
	serve -o listen=$QHTTP &&
	curl -s -o /dev/null -w "%{http_code}\n" "$URL/api/v1/pop/queue/a?wait=false" >actual &&
	echo 204 >expect && test_cmp expect actual &&
	kill -TERM $SPID && wait $SPID
'

test_done
