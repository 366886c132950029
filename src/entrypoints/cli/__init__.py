"""The `firmsift` command line: parsing, the commands, and the classify client."""
