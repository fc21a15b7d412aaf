#!/bin/sh
# fs-0071-sidecar: the container sidecar pattern of
# examples/docker-compose.yml without Docker.  The app runs in a second
# mount namespace whose mounts are slaves of this one (as an `rslave`
# volume): one queue's directory is bind-mounted there, and a consumer
# (examples/consumer.sh) pops through `next` and acks with mv through the
# bind.  This side checks that the acks committed, that the bind stayed in
# the app's namespace, and that a mount made here after the app started
# reaches it (what the sidecar's FUSE mount does).  Skips where unshare(2)
# is not permitted.
. "$(dirname "$0")/lib.sh"
command -v unshare >/dev/null 2>&1 || skip_all "no unshare (util-linux)"
unshare --mount --propagation slave true 2>/dev/null ||
	skip_all "unshare --mount is not permitted here"
mount_queenfs
EX="$TEST_DIRECTORY/../examples"
# cleanup_ unmounts $TRASH/late should a case fail with it still mounted
EXTRA_MOUNTS="$EXTRA_MOUNTS late"
mkdir -p "$TRASH/.extra"

test_expect_success 'setup: queue side with s1..s3' '
	q_init side &&
	echo "wait = 1" >"$Q/config" &&
	for i in 1 2 3; do printf "job %s" $i >"$Q/s$i" || return 1; done &&
	mkdir "$TRASH/app" "$TRASH/late"
'

test_expect_success 'a consumer in a slave namespace acks through a bind of the queue dir' '
	unshare --mount --propagation slave sh -c "
		mount --bind \"\$1\" \"\$2\" || exit 1
		DRAIN=1 sh \"\$3/consumer.sh\" \"\$2\" sh -c \"cat >>\$4\"
	" sidecar "$Q" "$TRASH/app" "$EX" "$TRASH/done" >app.out 2>&1 &&
	printf "job 1job 2job 3" >expect &&
	test_cmp expect "$TRASH/done" &&
	grep -q "^partition default: committed = 3," "$Q/stats" &&
	test_is 0 "$(stat_of "$Q/stats" leases)" leases &&
	! is_mounted_at "$TRASH/app"
'

test_expect_success 'a mount made here after the app started reaches the app' '
	U= &&
	mount --bind "$TRASH/late" "$TRASH/late" &&
	mount --make-shared "$TRASH/late" &&
	{ unshare --mount --propagation slave sh -c "
		k=100
		while ! test -e \"\$1/sys/health\" && test \$k -gt 0; do
			sleep 0.1; k=\$((k - 1))
		done
		cat \"\$1/sys/health\"
	" late "$TRASH/late" >late.out 2>&1 & } &&
	U=$! && track_pid $U &&
	mount --bind "$MNT" "$TRASH/late";
	r=$?;
	test -n "$U" && wait $U;
	while is_mounted_at "$TRASH/late"; do umount "$TRASH/late" || break; done;
	test $r = 0 && echo ok >expect && test_cmp expect late.out
'

test_done
