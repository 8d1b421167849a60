"""Results over time: a store's runs as series (unlike runs never mixed), change points in them
by E-Divisive means, whose change it was (the host's or the software's), and the study that
confirms one (docs/history.md)."""
