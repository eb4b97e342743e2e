"""Small widgets and renderables shared by the screens."""
