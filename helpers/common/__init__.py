"""What every step shares: user-facing errors, repository paths, signal handling, progress bars,
YAML files, and writing a file so that it is whole or absent."""
