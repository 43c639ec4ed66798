"""The gnt-* command-line tools: command tables with injectable I/O."""
