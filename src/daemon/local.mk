# src/daemon: see Makefile.am
