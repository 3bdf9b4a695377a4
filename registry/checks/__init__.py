"""Rule families whose checks need more than one file's bytes: MiSS manifests, git immutability, signatures."""
