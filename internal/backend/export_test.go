package backend

// MaxHeld is maxHeld, for the tests of the package's users' view.
const MaxHeld = maxHeld
