#!/bin/sh
# Build the Go broker into ports/go/bin/epochal-go-broker (modules from the Go module proxy).
set -e
cd "$(dirname "$0")"
go build -o bin/epochal-go-broker .
