#!/bin/sh
# unstale-mount.sh MOUNTPOINT: after a queenfs daemon died (kill -9, a
# crash) its mount stays and answers "Transport endpoint is not connected"
# (ENOTCONN).  Unmount it, but only when /proc/mounts shows a fuse.queenfs
# mount on MOUNTPOINT and stat(2) of it fails with ENOTCONN; if that fails
# too, say in one line what to run.  Exit 0 when MOUNTPOINT can be mounted.
mnt=${1:?usage: unstale-mount.sh MOUNTPOINT}
case "$mnt" in
/*) ;;
*) mnt=$(pwd)/$mnt ;;
esac
# /proc/mounts writes a space, tab, newline and backslash in octal
esc=$(printf '%s' "$mnt" | sed -e 's/\\/\\134/g' -e 's/ /\\040/g' -e 's/	/\\011/g')
awk -v m="$esc" '$2 == m && $3 == "fuse.queenfs" { f = 1 } END { exit !f }' \
    /proc/mounts || exit 0
err=$(LC_ALL=C stat "$mnt" 2>&1 >/dev/null) && exit 0
case "$err" in
*"Transport endpoint is not connected"*) ;;
*) exit 0 ;;
esac
if fusermount3 -u "$mnt" 2>/dev/null; then
	echo "queenfs: $mnt was a stale mount (its daemon died): unmounted it"
	exit 0
fi
echo "queenfs: $mnt is a stale mount (its daemon died) and still in use: run fusermount3 -uz $mnt" >&2
exit 1
