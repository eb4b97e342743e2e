"""The Textual operations console: screens and widgets over the headless core."""
