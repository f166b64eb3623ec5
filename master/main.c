/* main.c -- the trevo program. All of it is in master_cli(); this file only
 * decides how the process ends. */
#include "cli.h"

int main(int argc, char **argv)
{
    return master_cli(argc, argv);
}
