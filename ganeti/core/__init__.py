"""Pure code shared by every daemon and tool: no reactor, no network."""
