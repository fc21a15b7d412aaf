#!/bin/sh
# fs-0011-examples: the programs in examples/ work against a real mount:
# producer.sh (staged push), consumer.sh, consumer.py and the C consumer
# (ack on success; failed with user.queen.error on failure, which with
# retry_limit = 0 lands in the DLQ); each stops a batch at its first
# failure, and the shell consumers (README's too) exit once their queue is
# gone instead of spinning.
. "$(dirname "$0")/lib.sh"
mount_queenfs

EX="$TEST_DIRECTORY/../examples"
test -x "$QUEENFS_BUILD/examples/consumer" && test_set_prereq CONSUMER_C

# dead DIR: the dead letters of DIR as "<p>/<txid>" lines
dead () {
	(cd "$1/dlq" && find . -type f | sed "s|^\./||" | sort)
}

test_expect_success 'producer.sh pushes stdin as one message' '
	q_init ex &&
	printf "{\"id\": 1}" | sh "$EX/producer.sh" "$Q" order-1 &&
	printf "{\"id\": 1}" >expect &&
	test_cmp expect "$Q/partitions/default/order-1" &&
	test_is 1 "$(stat_of "$Q/stats" pushed)" pushed &&
	ls -A "$Q" | grep "^\." >staged;
	test_line_count = 0 staged
'

test_expect_success 'producer.sh pushes into a partition' '
	printf "{\"id\": 2}" | sh "$EX/producer.sh" "$Q" order-2 eu &&
	printf "{\"id\": 2}" >expect &&
	test_cmp expect "$Q/partitions/eu/order-2"
'

test_expect_success 'a failing producer.sh pushes nothing' '
	test_must_fail sh "$EX/producer.sh" "$Q" order-3 <"$TRASH" 2>/dev/null &&
	test_is 2 "$(stat_of "$Q/stats" pushed)" pushed &&
	test_path_is_missing "$Q/partitions/default/order-3"
'

test_expect_success 'consumer.sh acks what its command accepts, fails the rest' '
	q_init sh &&
	printf "wait = 1\nretry_limit = 0\n" >"$Q/config" &&
	printf ok >"$Q/s1" && printf bad >"$Q/s2" && printf ok >"$Q/s3" &&
	DRAIN=1 timeout 30 sh "$EX/consumer.sh" "$Q" grep -q ok &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth &&
	dead "$Q" >actual &&
	echo default/s2 >expect &&
	test_cmp expect actual
'

test_expect_success 'consumer.sh consumes a group made by mkdir, the queue mode untouched' '
	mkdir -p "$Q/groups/audit" &&
	DRAIN=1 timeout 30 sh "$EX/consumer.sh" "$Q/groups/audit" grep -q ok &&
	test_is 0 "$(stat_of "$Q/groups/audit/stats" depth)" "group depth" &&
	dead "$Q/groups/audit" >actual &&
	echo default/s2 >expect &&
	test_cmp expect actual &&
	test_is 1 "$(stat_of "$Q/stats" dlq)" "the queue-mode DLQ holds its own only"
'

test_expect_success PYTHON 'consumer.py processes, and fails with user.queen.error' '
	q_init py &&
	printf "wait = 1\nretry_limit = 0\n" >"$Q/config" &&
	printf "{\"id\": 7}" >"$Q/p1" && printf "{}" >"$Q/p2" &&
	printf "not json" >"$Q/p3" && printf "{\"id\": 8}" >"$Q/p4" &&
	timeout 30 python3 "$EX/consumer.py" "$Q" --drain >out 2>err &&
	cat out err &&
	printf "processed id %s\n" 7 8 >expect &&
	test_cmp expect out &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth &&
	dead "$Q" >actual &&
	printf "default/%s\n" p2 p3 >expect &&
	test_cmp expect actual &&
	getfattr --only-values -n user.queen.error "$Q/dlq/default/p2" >why &&
	grep -q "^ValueError: no id in the message$" why &&
	getfattr --only-values -n user.queen.error "$Q/dlq/default/p3" >why &&
	grep -q "^JSONDecodeError: " why
'

test_expect_success PYTHON 'consumer.py exits at once on Ctrl-C while waiting' '
	echo "wait = 20" >"$Q/config" &&
	{ "$PYTHON3" -c "
import runpy, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.argv = [sys.argv[1], sys.argv[2]]
runpy.run_path(sys.argv[0], run_name=\"__main__\")
" "$EX/consumer.py" "$Q" >/dev/null 2>&1 & } &&
	pid=$! && track_pid $pid &&
	sleep 1 &&
	kill -0 $pid &&
	kill -INT $pid &&
	wait_until 3 "! kill -0 $pid 2>/dev/null";
	r=$?
	stop_pid $pid
	test $r = 0
'

test_expect_success CONSUMER_C 'the C consumer acks, and fails an empty payload with its reason' '
	q_init c &&
	printf "wait = 1\nretry_limit = 0\n" >"$Q/config" &&
	printf hello >"$Q/c1" && : >"$Q/c2" && printf world >"$Q/c3" &&
	test_is 3 "$(stat_of "$Q/stats" pushed)" "pushed (an empty file is a message)" &&
	timeout 30 "$QUEENFS_BUILD/examples/consumer" "$Q" --drain >out &&
	cat out &&
	sed "s/, sum .*//" out >actual &&
	printf "%s\n" "c1: 5 bytes" "c3: 5 bytes" >expect &&
	test_cmp expect actual &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth &&
	dead "$Q" >actual &&
	echo default/c2 >expect &&
	test_cmp expect actual &&
	test_is "empty payload" "$(getfattr --only-values -n user.queen.error "$Q/dlq/default/c2")" error
'

test_expect_success 'consumer.sh stops a batch at its first failure (no refused acks after it)' '
	q_init shb &&
	printf "wait = 1\nretry_limit = 1\nbatch = 3\n" >"$Q/config" &&
	printf bad >"$Q/b1" && printf ok >"$Q/b2" && printf ok >"$Q/b3" &&
	DRAIN=1 timeout 30 sh "$EX/consumer.sh" "$Q" grep -q ok 2>err &&
	cat err &&
	! grep -v "next: No data available" err &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth &&
	dead "$Q" >actual &&
	echo default/b1 >expect &&
	test_cmp expect actual
'

test_expect_success PYTHON 'consumer.py stops a batch at its first failure (no ESTALE after it)' '
	q_init pyb &&
	printf "wait = 1\nretry_limit = 1\nbatch = 3\n" >"$Q/config" &&
	printf "{}" >"$Q/b1" && printf "{\"id\": 1}" >"$Q/b2" &&
	printf "{\"id\": 2}" >"$Q/b3" &&
	timeout 30 python3 "$EX/consumer.py" "$Q" --drain >out 2>err &&
	cat out err &&
	! grep -i "stale\|lease expired" err &&
	printf "processed id %s\n" 1 2 >expect &&
	test_cmp expect out &&
	dead "$Q" >actual &&
	echo default/b1 >expect &&
	test_cmp expect actual
'

test_expect_success CONSUMER_C 'the C consumer stops a batch at its first failure' '
	q_init cb &&
	printf "wait = 1\nretry_limit = 1\nbatch = 3\n" >"$Q/config" &&
	: >"$Q/b1" && printf hello >"$Q/b2" && printf world >"$Q/b3" &&
	timeout 30 "$QUEENFS_BUILD/examples/consumer" "$Q" --drain >out 2>err &&
	cat out err &&
	! grep -i "stale\|lease expired" err &&
	sed "s/, sum .*//" out >actual &&
	printf "%s\n" "b2: 5 bytes" "b3: 5 bytes" >expect &&
	test_cmp expect actual
'

# the README's ten-line consumer, as printed there, with QUEUE for its q
sed -n "/^## A consumer in ten lines of shell/,/^\`\`\`\$/{/^\`\`\`sh/,/^\`\`\`\$/p}" \
	"$TEST_DIRECTORY/../README.md" | sed "/^\`\`\`/d; s|^q=.*|q=\$1|" >"$TRASH/readme-consumer.sh"

test_expect_success 'the README consumer exits once its queue is removed' '
	test_line_count = 11 readme-consumer.sh &&
	q_init rm &&
	echo "wait = 1" >"$Q/config" &&
	{ sh -c "process () { cat >/dev/null; }; . ./readme-consumer.sh" \
		sh "$Q" >/dev/null 2>&1 & } &&
	pid=$! && track_pid $pid &&
	sleep 1 &&
	kill -0 $pid &&
	rmdir "$Q" &&
	wait_until 20 "! kill -0 $pid 2>/dev/null";
	r=$?
	stop_pid $pid
	test $r = 0
'

test_expect_success 'consumer.sh exits once its queue is removed' '
	q_init rm2 &&
	echo "wait = 1" >"$Q/config" &&
	{ sh "$EX/consumer.sh" "$Q" cat >/dev/null 2>&1 & } &&
	pid=$! && track_pid $pid &&
	sleep 1 &&
	rmdir "$Q" &&
	wait_until 20 "! kill -0 $pid 2>/dev/null";
	r=$?
	stop_pid $pid
	test $r = 0
'

test_done
