# src/cli: see Makefile.am
