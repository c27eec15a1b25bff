from drsg.cli.main import main

main()
