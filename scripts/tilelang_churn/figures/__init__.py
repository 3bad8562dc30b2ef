"""Every figure of the workflow and of the book, in one style."""
