#!/bin/sh
# A rank that starts late (tests/executor_test.cpp): `execute` runs this instead of clustersim, and
# rank 1 sleeps $CLUSTERSIM_LATE_SECONDS before becoming `clustersim execute-rank`
# ($CLUSTERSIM_REAL_BINARY), as on a machine so loaded that one rank starts seconds after its peer.
prev=
for a in "$@"; do
  if [ "$prev" = --rank ] && [ "$a" = 1 ]; then sleep "$CLUSTERSIM_LATE_SECONDS"; fi
  prev=$a
done
exec "$CLUSTERSIM_REAL_BINARY" "$@"
