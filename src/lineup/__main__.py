from lineup.cli import main

main()
