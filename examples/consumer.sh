#!/bin/sh
# consumer.sh - the smallest queenfs consumer: pop, process, ack or fail.
# Each read of `next` leases a batch and prints `leased/<lease>/<txid>`
# lines; COMMAND gets each payload on stdin; success moves the message to
# ack/, failure to failed/ (retried, then dead-lettered) and ends the
# batch, as does a refused ack.  With DRAIN=1 it stops when the queue stays
# empty for the queue's `wait` seconds; it exits 1 when the queue or the
# mount is gone, and backs off a second after any other failed read.
#
# usage: consumer.sh QUEUE_DIR COMMAND [ARG...]
#   examples/consumer.sh /mnt/queenfs/queues/jobs sh -c 'wc -c'
# QUEUE_DIR may be a consumer group's directory, made first:
#   mkdir -p /mnt/queenfs/queues/jobs/groups/audit
#   examples/consumer.sh /mnt/queenfs/queues/jobs/groups/audit cat
q=$1; shift
while :; do
	if ! batch=$(cat "$q/next"); then
		# nothing to pop (ENODATA after `wait` s), or an error
		[ -e "$q/next" ] || exit 1	# the queue (or the mount) is gone
		[ -n "${DRAIN:-}" ] && exit 0
		sleep 1
		continue
	fi
	# the batch stops at the first failure: the rest redelivers
	for m in $batch; do
		if "$@" <"$q/$m"; then
			mv "$q/$m" "$q/ack/" || break
		else
			mv "$q/$m" "$q/failed/"
			break
		fi
	done
done
