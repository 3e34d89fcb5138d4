"""The CLI's exit statuses (docs/cli.md), in a module of their own so that a command can name one without importing
the package's entry point, which imports every command."""

EXIT_USER_ERROR, EXIT_UNKNOWN, EXIT_INTERNAL, EXIT_INTERRUPTED = 2, 3, 70, 130
