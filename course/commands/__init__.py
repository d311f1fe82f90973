"""One module per command; ``course.cli`` only declares them."""
