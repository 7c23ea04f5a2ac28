#!/bin/bash
# Run every network-namespace test; close with one line for all their checks.
cd "$(dirname "$0")/integration" && exec ../run-suite.sh integration integration ./*.sh
