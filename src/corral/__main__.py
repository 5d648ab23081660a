from corral.cli.main import entry

entry()
