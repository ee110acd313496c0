from seq2seq.cli import main

main()
