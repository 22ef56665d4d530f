# SPDX-License-Identifier: MIT
# tests/remote: the remote mode (docs/scaling.md) with real processes: a
# front and two provisioners (each yuxi-sandboxd behind its own nginx with
# TLS) on the one engine, driven by pytest through tests/lib/yxsvc.py's
# Cluster. The security cases also run the control daemon
# (tests/security/yuxi-sandboxd-control: provcred, provroutes) and a front
# nginx without `internal`, which must leak. test_remote_faults.py puts
# hosts behind network faults of its own (netfault.py: a relay, network
# namespaces with iptables inside; root) against controls (hostack, resend,
# no YUXI_HOST_CALLS).
TESTS += tests/remote/run-remote.sh
EXTRA_DIST += tests/remote/run-remote.sh tests/remote/conftest.py \
	tests/remote/test_remote.py tests/remote/test_remote_security.py \
	tests/remote/test_remote_faults.py tests/remote/netfault.py \
	tests/remote/test_remote_mcp.py \
	tests/remote/test_remote_snap.py \
	nginx/provisioner.conf.in scripts/remote-nginx-conf.sh
