#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Generates configure and the Makefile templates.
set -e
cd "$(dirname "$0")"
autoreconf -fi
