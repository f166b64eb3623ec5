# Sourced by the integration scripts (needs TREVO): xor_ok NET returns 0 when
# the network NET puts every XOR pattern (bias, x1, x2), each from a reset
# state, on the right side of 0.5 -- the task's own success test, from outside.
xor_ok() {
    printf '1,0,0\n\n1,0,1\n\n1,1,0\n\n1,1,1\n' | "$TREVO" net eval "$1" |
        awk 'BEGIN { t[1] = 0; t[2] = 1; t[3] = 1; t[4] = 0 }
             { n++; if ((t[n] == 1) != ($1 >= 0.5)) bad++ }
             END { exit (n != 4 || bad) }'
}
