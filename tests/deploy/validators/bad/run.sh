#!/usr/bin/env bash
# A run.sh with a syntax error bash -n must reject (an if without its fi).
if [ -n "${PLEXUS_SOURCE:-}" ]; then
  docker build -t plexus:latest "$PLEXUS_SOURCE"
docker run --detach plexus:latest
