#!/bin/sh
# consumer.sh - the smallest queenfs consumer: pop, process, ack or fail.
# Each read of `next` leases a batch and prints `leased/<lease>/<txid>`
# lines; COMMAND gets each payload on stdin; success moves the message to
# ack/, failure to failed/ (retried, then dead-lettered).  With DRAIN=1 it
# stops when the queue stays empty for the queue's `wait` seconds.
#
# usage: consumer.sh QUEUE_DIR COMMAND [ARG...]
#   examples/consumer.sh /mnt/queenfs/queues/jobs sh -c 'wc -c'
q=$1; shift
while [ -d "$q" ]; do
	batch=$(cat "$q/next") || { [ -n "${DRAIN:-}" ] && exit 0; continue; }
	for m in $batch; do
		if "$@" <"$q/$m"; then
			mv "$q/$m" "$q/ack/"
		else
			mv "$q/$m" "$q/failed/"
		fi
	done
done
exit 1	# the queue (or the mount) went away
