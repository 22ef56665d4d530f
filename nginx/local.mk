# SPDX-License-Identifier: MIT
# nginx/: the templates `yuxi-sandbox nginx-conf` renders into the two
# snippets of a site (docs/nginx.md), installed where the command looks by
# default (YX_NGINX_TEMPLATES), with the example site around them.
nginxdir = $(pkgdatadir)/nginx
dist_nginx_DATA = nginx/yuxi-sandbox-http.conf.in nginx/yuxi-sandbox-server.conf.in \
	nginx/yuxi-sandbox-settings.conf.in nginx/yuxi-sandbox-preview.conf.in \
	nginx/yuxi-sandbox.conf
