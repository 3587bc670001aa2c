"""The CPU rank update: argument checks, the frontier workspace, the thread choice."""
