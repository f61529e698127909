#!/usr/bin/env bash
# Writes a tiny data set in CNTK's MNIST text layout into DIR: Train-28x28_cntk_text.txt and
# Test-28x28_cntk_text.txt, 320 samples each, class c lighting every pixel p with p % 10 == c (learnable).
# Usage: write_tiny_mnist.sh DIR
set -euo pipefail
awk -v seed=1 -v dir="$1" 'BEGIN {
    srand(seed)
    for (f = 0; f < 2; f++) {
        file = f ? "Test-28x28_cntk_text.txt" : "Train-28x28_cntk_text.txt"
        for (i = 0; i < 320; i++) {
            label = i % 10
            line = "|labels"
            for (c = 0; c < 10; c++) line = line (c == label ? " 1" : " 0")
            line = line " |features"
            for (p = 0; p < 784; p++) line = line " " int(255 * rand() * (p % 10 == label))
            print line > (dir "/" file)
        }
    }
}'
