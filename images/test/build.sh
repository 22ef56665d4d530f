#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the tiny test image `yuxi-sandbox-test` from Debian's busybox-static,
# offline (no registry): a root filesystem with busybox and its applet links,
# a user yuxi (uid 1000) with home /home/yuxi, imported with `docker import`.
# Rebuilt only when this recipe changes (label io.yuxi.recipe).
set -eu
IMAGE=${1:-yuxi-sandbox-test:latest}
BUSYBOX=${BUSYBOX:-/bin/busybox}
here=$(cd "$(dirname "$0")" && pwd)
recipe=$( { cat "$0"; sha256sum "$BUSYBOX" | cut -d' ' -f1; } | sha256sum | cut -c1-16)

have=$(docker image inspect -f '{{ index .Config.Labels "io.yuxi.recipe" }}' "$IMAGE" 2>/dev/null || true)
if [ "$have" = "$recipe" ]; then
	echo "image $IMAGE is up to date ($recipe)"
	exit 0
fi
[ -x "$BUSYBOX" ] || { echo "build.sh: $BUSYBOX missing (apt-get install busybox-static)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/yuxi-test-image.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" \
	"$root/usr/local/bin" "$root/etc" "$root/tmp" "$root/home/yuxi" "$root/proc" \
	"$root/sys" "$root/dev" "$root/root" "$root/opt/yuxi"
cp "$BUSYBOX" "$root/bin/busybox"
"$BUSYBOX" --list-full | while read -r app; do
	[ "$app" = bin/busybox ] && continue
	ln -sf /bin/busybox "$root/$app"
done
# python3 stand-in is not provided: tests that need python use the default image.
cat > "$root/etc/passwd" <<'PW'
root:x:0:0:root:/root:/bin/sh
yuxi:x:1000:1000:yuxi:/home/yuxi:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PW
cat > "$root/etc/group" <<'GR'
root:x:0:
yuxi:x:1000:
nogroup:x:65534:
GR
chmod 1777 "$root/tmp"
chown 1000:1000 "$root/home/yuxi"
tar -C "$root" -cf "$tmp/rootfs.tar" .
docker import \
	-c 'CMD ["/bin/busybox", "tail", "-f", "/dev/null"]' \
	-c 'ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/home/yuxi' \
	-c "LABEL io.yuxi.recipe=$recipe" \
	-c 'WORKDIR /home/yuxi' \
	"$tmp/rootfs.tar" "$IMAGE" >/dev/null
echo "built $IMAGE ($recipe)"
