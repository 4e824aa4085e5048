"""The application shell: configuration, logging, the command line and process wiring."""
