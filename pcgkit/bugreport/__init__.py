"""What a maintainer gets: environment capture and diff, standalone repros, issue drafts."""
