# SPDX-License-Identifier: MIT
# images: the offline recipes of the sandbox images, installed to
# $(pkgdatadir)/images/<recipe>/build.sh; `yuxi-sandbox image build
# [default|test|browser]` runs them (src/cli).
imagesdefaultdir = $(pkgdatadir)/images/default
dist_imagesdefault_SCRIPTS = images/default/build.sh
imagestestdir = $(pkgdatadir)/images/test
dist_imagestest_SCRIPTS = images/test/build.sh
imagesbrowserdir = $(pkgdatadir)/images/browser
dist_imagesbrowser_SCRIPTS = images/browser/build.sh
# yuxi-cdp runs in the image (build.sh installs it there 0755), never on the
# host: data here, so the package needs no python3 for it
dist_imagesbrowser_DATA = images/browser/yuxi-cdp
