# src/path: see Makefile.am
