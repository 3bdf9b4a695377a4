"""Reading a registry for people: entries, list/show rendering, scores, comparisons."""
