from seq2seq.entry import main

main()
