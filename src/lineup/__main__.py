from lineup.entry import main

main()
