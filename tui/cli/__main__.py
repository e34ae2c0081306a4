from tui.cli.main import main

main()
