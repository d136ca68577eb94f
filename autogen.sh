#!/bin/sh
# Generates configure and the Makefile templates.
set -e
cd "$(dirname "$0")"
autoreconf -fi
