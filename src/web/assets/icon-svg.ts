/** `/web/icon.svg`: the page's icon, stacked stem bars. */
export const iconSvg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="7" fill="#181b22"/>
<rect x="6" y="7" width="20" height="3" rx="1.5" fill="#f472b6"/>
<rect x="6" y="12.5" width="14" height="3" rx="1.5" fill="#fbbf24"/>
<rect x="6" y="18" width="17" height="3" rx="1.5" fill="#60a5fa"/>
<rect x="6" y="23.5" width="11" height="3" rx="1.5" fill="#a78bfa"/>
</svg>
`;
