// Placeholder: an example program linking libengine lands with the end-to-end engine.
#include <mgjoin/join.hpp>
int main() { return 0; }
