# src/provider: see Makefile.am
