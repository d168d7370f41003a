/* The pause program (pause.c, linked static) inside the kvol binary, for the pause image. */
  .section .rodata
  .global kvol_pause_start
  .global kvol_pause_end
  .balign 16
kvol_pause_start:
  .incbin KVOL_PAUSE_BINARY
kvol_pause_end:
  .section .note.GNU-stack,"",%progbits
