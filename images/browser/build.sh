#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the browser sandbox image `yuxi-sandbox-browser` offline from Debian
# packages, like the default image (images/default/build.sh: mmdebstrap from
# THIS machine's own apt sources, the user yuxi, docs/man/locales trimmed,
# `docker import`), with what the browser profile's services run
# (docs/browser.md): Chromium, the X virtual framebuffer Xvfb, the VNC server
# x11vnc, noVNC with websockify, fonts (Noto CJK among them), and yuxi-cdp, a
# short DevTools client (images/browser/yuxi-cdp). The default image's tools
# are all there too. Rebuilt only when this recipe (or yuxi-cdp) changes
# (label io.yuxi.recipe). Size and build time: docs/browser.md.
set -eu
IMAGE=${1:-yuxi-sandbox-browser:latest}
SUITE=${YUXI_IMAGE_SUITE:-bookworm}
here=$(cd "$(dirname "$0")" && pwd)
PACKAGES="bash,coreutils,findutils,grep,sed,procps,python3,python3-venv,git,ca-certificates,tini,less,file,xz-utils,bzip2,unzip,curl,jq,patch,diffutils"
PACKAGES="$PACKAGES,chromium,xvfb,xauth,x11vnc,novnc,websockify,python3-websocket,fonts-noto-cjk,fonts-liberation,fonts-dejavu-core"
recipe=$( { cat "$0" "$here/yuxi-cdp"; echo "$SUITE $PACKAGES"; } | sha256sum | cut -c1-16)

have=$(docker image inspect -f '{{ index .Config.Labels "io.yuxi.recipe" }}' "$IMAGE" 2>/dev/null || true)
if [ "$have" = "$recipe" ]; then
	echo "image $IMAGE is up to date ($recipe)"
	exit 0
fi
command -v mmdebstrap >/dev/null || { echo "build.sh: mmdebstrap missing (apt-get install mmdebstrap)" >&2; exit 1; }

sources=""
for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[ -s "$f" ] || continue
	sources="$sources $f"
done
[ -n "$sources" ] || { echo "build.sh: no apt sources found in /etc/apt" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/yuxi-image.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp "$here/yuxi-cdp" "$tmp/yuxi-cdp"
# Chromium's own translations (locales/*.pak) stay: it needs en-US.pak.
# shellcheck disable=SC2086
TMPDIR=$tmp mmdebstrap --variant=minbase --include="$PACKAGES" \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-exclude=/usr/share/info/*' \
	--customize-hook='chroot "$1" groupadd -g 1000 yuxi' \
	--customize-hook='chroot "$1" useradd -u 1000 -g 1000 -m -d /home/yuxi -s /bin/bash yuxi' \
	--customize-hook='mkdir -p "$1/opt/yuxi/bin" "$1/home/yuxi/user-data" "$1/home/yuxi/skills"' \
	--customize-hook="install -m 0755 '$tmp/yuxi-cdp' \"\$1/usr/local/bin/yuxi-cdp\"" \
	--customize-hook='chroot "$1" fc-cache -s >/dev/null 2>&1 || true' \
	--customize-hook='rm -rf "$1/var/lib/apt/lists/"* "$1/var/cache/apt/"*' \
	"$SUITE" "$tmp/rootfs.tar" $sources
docker import \
	-c 'CMD ["/usr/bin/tail", "-f", "/dev/null"]' \
	-c 'ENV PATH=/home/yuxi/.local/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/home/yuxi LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1' \
	-c "LABEL io.yuxi.recipe=$recipe" \
	-c 'USER 1000:1000' \
	-c 'WORKDIR /home/yuxi' \
	"$tmp/rootfs.tar" "$IMAGE" >/dev/null
echo "built $IMAGE ($recipe)"
