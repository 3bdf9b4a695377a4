"""The vocabulary every layer shares: rule codes and findings, errors, safe text, file reading, the code digest.

Imports nothing else of the package."""
