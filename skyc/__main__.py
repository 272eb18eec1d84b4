from skyc.cli import main

main()
