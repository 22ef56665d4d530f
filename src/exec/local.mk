# src/exec: see Makefile.am
