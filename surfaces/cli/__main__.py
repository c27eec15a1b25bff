from drsg.surfaces.cli.main import main

main()
