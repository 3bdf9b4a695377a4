"""Commands that change a registry: init, add-base, add, sums, README, sign, the demo; each behind the checks."""
