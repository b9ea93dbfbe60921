"""The training scaffold shared by every trainer of the package (taggers, image models)."""
